PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE rocpd_metadata_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "tag" TEXT NOT NULL,
    "value" TEXT NOT NULL
);
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(1,'schema_version','3');
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(2,'kreplay_schema_version','3');
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(3,'uuid','_2888d594ff44198a1a931991a71059ab');
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(4,'clock_control','none');
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(5,'cache_control','all');
INSERT INTO rocpd_metadata_2888d594ff44198a1a931991a71059ab VALUES(6,'guid','2c68376a-5bc1-25ea-d2a6-7c31da4bae91');
CREATE TABLE rocpd_string_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "string" TEXT NOT NULL,
    UNIQUE ("guid", "string")
);
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','KERNEL_DISPATCH');
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)');
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','accumulate(unsigned int*, unsigned int const*, unsigned int)');
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','bump_counter()');
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','neighbor_mix(unsigned int*, unsigned int)');
INSERT INTO rocpd_string_2888d594ff44198a1a931991a71059ab VALUES(6,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91','managed_touch(unsigned int*, unsigned int)');
CREATE TABLE rocpd_info_node_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "hash" BIGINT NOT NULL UNIQUE,
    "machine_id" TEXT NOT NULL UNIQUE,
    "system_name" TEXT,
    "hostname" TEXT,
    "release" TEXT,
    "version" TEXT,
    "hardware_name" TEXT,
    "domain_name" TEXT
);
INSERT INTO rocpd_info_node_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',317393289365450230,'vm',NULL,'vm',NULL,NULL,NULL,NULL);
CREATE TABLE rocpd_info_process_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL UNIQUE,
    "nid" INTEGER NOT NULL,
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL,
    "init" BIGINT,
    "fini" BIGINT,
    "start" BIGINT,
    "end" BIGINT,
    "command" TEXT,
    "environment" JSONB DEFAULT '{}' NOT NULL,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (nid) REFERENCES rocpd_info_node_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_info_process_2888d594ff44198a1a931991a71059ab VALUES(6946,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6945,6946,1796454606053017472,1796454606188879319,1796454606053017472,1796454606188879319,'/work/main/target/debug/kreplay-sim-app','{}','{"argv":["/work/main/target/debug/kreplay-sim-app"],"cache_control":"all"}');
CREATE TABLE rocpd_info_thread_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER NOT NULL,
    "name" TEXT,
    "start" BIGINT,
    "end" BIGINT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    UNIQUE ("guid", "tid")
);
INSERT INTO rocpd_info_thread_2888d594ff44198a1a931991a71059ab VALUES(6952,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6945,6946,6952,NULL,NULL,NULL,'{}');
CREATE TABLE rocpd_info_agent_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "type" TEXT CHECK ("type" IN ('CPU', 'GPU', 'NIC')),
    "absolute_index" INTEGER,
    "logical_index" INTEGER,
    "type_index" INTEGER,
    "uuid" INTEGER,
    "name" TEXT,
    "model_name" TEXT,
    "vendor_name" TEXT,
    "product_name" TEXT,
    "user_name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (nid) REFERENCES rocpd_info_node_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_info_agent_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,'GPU',0,0,0,NULL,'SIM','kreplay software device','kreplay software device','kreplay software device','kreplay software device','{"global_memory_bytes":1073741824,"max_threads_per_sm":1024,"pci_location":"","shared_memory_per_sm_bytes":65536,"sm_count":4}');
CREATE TABLE rocpd_info_pmc_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "agent_id" INTEGER,
    "target_arch" TEXT CHECK ("target_arch" IN ('CPU', 'GPU', 'NIC')),
    "event_code" INT,
    "instance_id" INTEGER,
    "name" TEXT NOT NULL,
    "symbol" TEXT NOT NULL,
    "description" TEXT,
    "long_description" TEXT DEFAULT '',
    "component" TEXT,
    "units" TEXT DEFAULT '',
    "value_type" TEXT CHECK ("value_type" IN ('ABS', 'ACCUM', 'RELATIVE')),
    "block" TEXT,
    "expression" TEXT,
    "is_constant" INTEGER,
    "is_derived" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_info_pmc_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,NULL,'GPU',NULL,NULL,'sim__warps_launched.sum','sim__warps_launched.sum','Number of warps launched, summed over the device','','kreplay','warp','ABS','sim','sim__warps_launched.sum',0,0,'{}');
INSERT INTO rocpd_info_pmc_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,NULL,'GPU',NULL,NULL,'sim__inst_executed.sum','sim__inst_executed.sum','Number of warp instructions executed, summed over the device','','kreplay','inst','ABS','sim','sim__inst_executed.sum',0,0,'{}');
INSERT INTO rocpd_info_pmc_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,NULL,'GPU',NULL,NULL,'sim__cycles_elapsed.max','sim__cycles_elapsed.max','Cycles elapsed while the kernel ran, maximum over the device''s units (varies between runs)','','kreplay','cycle','ABS','sim','sim__cycles_elapsed.max',0,0,'{}');
CREATE TABLE rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "code_object_id" INTEGER NOT NULL,
    "kernel_name" TEXT,
    "display_name" TEXT,
    "kernel_object" INTEGER,
    "kernarg_segment_size" INTEGER,
    "kernarg_segment_alignment" INTEGER,
    "group_segment_size" INTEGER,
    "private_segment_size" INTEGER,
    "sgpr_count" INTEGER,
    "arch_vgpr_count" INTEGER,
    "accum_vgpr_count" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
INSERT INTO rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,0,'_Z9scale_addPjjjj','scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)',1,32,NULL,0,0,0,16,0,'{}');
INSERT INTO rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,0,'_Z10accumulatePjPKjj','accumulate(unsigned int*, unsigned int const*, unsigned int)',2,32,NULL,0,0,0,16,0,'{}');
INSERT INTO rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,0,'_Z12bump_counterv','bump_counter()',3,32,NULL,0,0,0,16,0,'{}');
INSERT INTO rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,0,'_Z12neighbor_mixPjj','neighbor_mix(unsigned int*, unsigned int)',4,32,NULL,0,0,0,16,0,'{}');
INSERT INTO rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,0,'_Z13managed_touchPjj','managed_touch(unsigned int*, unsigned int)',5,32,NULL,0,0,0,16,0,'{}');
CREATE TABLE rocpd_event_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "category_id" INTEGER,
    "stack_id" INTEGER,
    "parent_stack_id" INTEGER,
    "correlation_id" INTEGER,
    "call_stack" JSONB DEFAULT '{}' NOT NULL,
    "line_info" JSONB DEFAULT '{}' NOT NULL,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (category_id) REFERENCES rocpd_string_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,2,NULL,2,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,3,NULL,3,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,2,NULL,2,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,3,NULL,3,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,2,NULL,2,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(6,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,3,NULL,3,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(7,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,7,NULL,7,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(8,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,8,NULL,8,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(9,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,7,NULL,7,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(10,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,8,NULL,8,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(11,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,7,NULL,7,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(12,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,8,NULL,8,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(13,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,12,NULL,12,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(14,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,13,NULL,13,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(15,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,12,NULL,12,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(16,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,13,NULL,13,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(17,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,12,NULL,12,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(18,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,13,NULL,13,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(19,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,18,NULL,18,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(20,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,18,NULL,18,'{}','{}','{}');
INSERT INTO rocpd_event_2888d594ff44198a1a931991a71059ab VALUES(21,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,18,NULL,18,'{}','{}','{}');
CREATE TABLE rocpd_pmc_event_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "event_id" INTEGER,
    "pmc_id" INTEGER NOT NULL,
    "value" REAL DEFAULT 0.0,
    "extdata" JSONB DEFAULT '{}',
    FOREIGN KEY (pmc_id) REFERENCES rocpd_info_pmc_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE,
    FOREIGN KEY (event_id) REFERENCES rocpd_event_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,2,160.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',2,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',2,2,3.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',3,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(6,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',3,3,2345.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(7,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',4,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(8,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',4,3,114.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(9,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',5,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(10,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(11,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',7,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(12,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',7,2,160.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(13,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',8,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(14,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',8,2,3.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(15,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',9,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(16,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',9,3,2384.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(17,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',10,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(18,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',10,3,117.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(19,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',11,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(20,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',12,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(21,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',13,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(22,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',13,2,160.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(23,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',14,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(24,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',14,2,3.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(25,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',15,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(26,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',15,3,2325.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(27,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',16,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(28,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',16,3,115.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(29,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',17,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(30,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',18,1,8.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(31,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',19,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(32,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',19,2,160.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(33,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',20,1,32.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(34,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',20,3,2316.0,'{}');
INSERT INTO rocpd_pmc_event_2888d594ff44198a1a931991a71059ab VALUES(35,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',21,1,32.0,'{}');
CREATE TABLE rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "agent_id" INTEGER NOT NULL,
    "kernel_id" INTEGER NOT NULL,
    "dispatch_id" INTEGER NOT NULL,
    "queue_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "private_segment_size" INTEGER,
    "group_segment_size" INTEGER,
    "workgroup_size_x" INTEGER NOT NULL,
    "workgroup_size_y" INTEGER NOT NULL,
    "workgroup_size_z" INTEGER NOT NULL,
    "grid_size_x" INTEGER NOT NULL,
    "grid_size_y" INTEGER NOT NULL,
    "grid_size_z" INTEGER NOT NULL,
    "region_name_id" INTEGER,
    "event_id" INTEGER,
    "replay_pass" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE,
    FOREIGN KEY (kernel_id) REFERENCES rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE,
    FOREIGN KEY (region_name_id) REFERENCES rocpd_string_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE,
    FOREIGN KEY (event_id) REFERENCES rocpd_event_2888d594ff44198a1a931991a71059ab (id) ON UPDATE CASCADE
);
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,2,1,1,1001702,1004038,0,0,256,1,1,1024,1,1,3,1,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,3,1,1,1004038,1004153,0,0,256,1,1,256,1,1,4,2,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,2,1,1,1004153,1006498,0,0,256,1,1,1024,1,1,3,3,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,3,1,1,1006498,1006613,0,0,256,1,1,256,1,1,4,4,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,2,1,1,1001702,1004038,0,0,256,1,1,1024,1,1,3,5,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(6,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,3,1,1,1004038,1004153,0,0,256,1,1,256,1,1,4,6,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(7,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,7,1,1,1014223,1016596,0,0,256,1,1,1024,1,1,3,7,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(8,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,8,1,1,1016605,1016721,0,0,256,1,1,256,1,1,4,8,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(9,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,7,1,1,1016722,1019095,0,0,256,1,1,1024,1,1,3,9,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(10,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,8,1,1,1019106,1019222,0,0,256,1,1,256,1,1,4,10,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(11,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,7,1,1,1014223,1016596,0,0,256,1,1,1024,1,1,3,11,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(12,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,8,1,1,1016605,1016721,0,0,256,1,1,256,1,1,4,12,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(13,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,12,1,1,1026908,1029247,0,0,256,1,1,1024,1,1,3,13,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(14,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,13,1,1,1029247,1029360,0,0,256,1,1,256,1,1,4,14,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(15,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,12,1,1,1029362,1031687,0,0,256,1,1,1024,1,1,3,15,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(16,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,13,1,1,1031687,1031800,0,0,256,1,1,256,1,1,4,16,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(17,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,12,1,1,1026908,1029247,0,0,256,1,1,1024,1,1,3,17,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(18,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,3,13,1,1,1029247,1029360,0,0,256,1,1,256,1,1,4,18,2,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(19,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,17,1,1,1041759,1044124,0,0,256,1,1,1024,1,1,3,19,0,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(20,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,17,1,1,1044130,1046495,0,0,256,1,1,1024,1,1,3,20,1,'{"dynamic_shared_bytes":0}');
INSERT INTO rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab VALUES(21,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,6952,1,2,17,1,1,1041759,1044124,0,0,256,1,1,1024,1,1,3,21,2,'{"dynamic_shared_bytes":0}');
CREATE TABLE rocpd_info_queue_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    "cuda_stream" INTEGER
);
INSERT INTO rocpd_info_queue_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,'stream 3','{"stream_id":3}',3);
CREATE TABLE rocpd_info_stream_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL,
    "cuda_stream" INTEGER
);
INSERT INTO rocpd_info_stream_2888d594ff44198a1a931991a71059ab VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',1,6946,'stream 3','{"stream_id":3}',3);
CREATE TABLE rocpd_info_code_object_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "agent_id" INTEGER,
    "uri" TEXT,
    "load_base" BIGINT,
    "load_size" BIGINT,
    "load_delta" BIGINT,
    "storage_type" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_track_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER,
    "tid" INTEGER,
    "name_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_arg_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "event_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_region_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER NOT NULL,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "name_id" INTEGER NOT NULL,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_sample_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "track_id" INTEGER NOT NULL,
    "timestamp" BIGINT NOT NULL,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_memory_copy_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "name_id" INTEGER NOT NULL,
    "dst_agent_id" INTEGER,
    "dst_address" INTEGER,
    "src_agent_id" INTEGER,
    "src_address" INTEGER,
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER,
    "stream_id" INTEGER,
    "region_name_id" INTEGER,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE rocpd_memory_allocate_2888d594ff44198a1a931991a71059ab (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "nid" INTEGER NOT NULL,
    "pid" INTEGER NOT NULL,
    "tid" INTEGER,
    "agent_id" INTEGER,
    "type" TEXT,
    "level" TEXT,
    "start" BIGINT NOT NULL,
    "end" BIGINT NOT NULL,
    "address" INTEGER,
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER,
    "stream_id" INTEGER,
    "event_id" INTEGER,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);
CREATE TABLE kreplay_replay_cost (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "dispatch_id" INTEGER NOT NULL,
    "agent_id" INTEGER NOT NULL,
    "outcome" TEXT NOT NULL,
    "passes" INTEGER NOT NULL,
    "bytes_tracked" INTEGER NOT NULL,
    "bytes_snapshotted" INTEGER NOT NULL,
    "bytes_restored" INTEGER NOT NULL,
    "staging" TEXT NOT NULL,
    "drain_ns" INTEGER NOT NULL,
    "snapshot_ns" INTEGER NOT NULL,
    "pass_ns" JSONB NOT NULL,
    "restore_ns" INTEGER NOT NULL,
    "timing_execution_ns" INTEGER NOT NULL DEFAULT 0,
    "cache" TEXT NOT NULL,
    "sm_clock_min_mhz" INTEGER NOT NULL,
    "sm_clock_max_mhz" INTEGER NOT NULL,
    "memory_clock_min_mhz" INTEGER NOT NULL,
    "memory_clock_max_mhz" INTEGER NOT NULL
);
INSERT INTO kreplay_replay_cost VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,2,0,'replayed',2,20484,40968,61452,'device',1693,49445,'[7816440,544373]',6479,527728,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(2,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,3,0,'replayed',2,20484,0,0,'device',0,0,'[0,0]',0,0,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(3,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,7,0,'replayed',2,20484,40968,61452,'device',1732,37707,'[11697154,542380]',7220,535200,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(4,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,8,0,'replayed',2,20484,0,0,'device',0,0,'[0,0]',0,0,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(5,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,12,0,'replayed',2,20484,40968,61452,'device',1632,26770,'[12039195,538755]',7260,530422,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(6,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,13,0,'replayed',2,20484,0,0,'device',0,0,'[0,0]',0,0,'flushed',0,0,0,0);
INSERT INTO kreplay_replay_cost VALUES(7,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,17,0,'replayed',2,20484,40968,61452,'device',1722,22544,'[6919000,595159]',9053,561969,'flushed',0,0,0,0);
CREATE TABLE kreplay_warning (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "guid" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "message" TEXT NOT NULL
);
INSERT INTO kreplay_warning VALUES(1,'2c68376a-5bc1-25ea-d2a6-7c31da4bae91',6946,'launches recorded into a stream capture do not execute and are not profiled; the graph built from them is, when it is launched (on CUDA node by node, unless a warning says it runs whole)');
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('rocpd_metadata_2888d594ff44198a1a931991a71059ab',6);
INSERT INTO sqlite_sequence VALUES('rocpd_info_node_2888d594ff44198a1a931991a71059ab',1);
INSERT INTO sqlite_sequence VALUES('rocpd_info_process_2888d594ff44198a1a931991a71059ab',6946);
INSERT INTO sqlite_sequence VALUES('rocpd_string_2888d594ff44198a1a931991a71059ab',6);
INSERT INTO sqlite_sequence VALUES('rocpd_info_agent_2888d594ff44198a1a931991a71059ab',1);
INSERT INTO sqlite_sequence VALUES('rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab',5);
INSERT INTO sqlite_sequence VALUES('rocpd_info_pmc_2888d594ff44198a1a931991a71059ab',3);
INSERT INTO sqlite_sequence VALUES('rocpd_info_thread_2888d594ff44198a1a931991a71059ab',6952);
INSERT INTO sqlite_sequence VALUES('rocpd_info_queue_2888d594ff44198a1a931991a71059ab',1);
INSERT INTO sqlite_sequence VALUES('rocpd_info_stream_2888d594ff44198a1a931991a71059ab',1);
INSERT INTO sqlite_sequence VALUES('rocpd_event_2888d594ff44198a1a931991a71059ab',21);
INSERT INTO sqlite_sequence VALUES('rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab',21);
INSERT INTO sqlite_sequence VALUES('rocpd_pmc_event_2888d594ff44198a1a931991a71059ab',35);
INSERT INTO sqlite_sequence VALUES('kreplay_replay_cost',7);
INSERT INTO sqlite_sequence VALUES('kreplay_warning',1);
CREATE INDEX rocpd_kernel_dispatch_event_2888d594ff44198a1a931991a71059ab ON rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab (event_id);
CREATE INDEX rocpd_pmc_event_event_2888d594ff44198a1a931991a71059ab ON rocpd_pmc_event_2888d594ff44198a1a931991a71059ab (event_id);
CREATE VIEW rocpd_metadata AS SELECT * FROM rocpd_metadata_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_string AS SELECT * FROM rocpd_string_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_node AS SELECT * FROM rocpd_info_node_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_process AS SELECT * FROM rocpd_info_process_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_thread AS SELECT * FROM rocpd_info_thread_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_agent AS SELECT * FROM rocpd_info_agent_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_pmc AS SELECT * FROM rocpd_info_pmc_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_event AS SELECT * FROM rocpd_event_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_pmc_event AS SELECT * FROM rocpd_pmc_event_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_queue AS SELECT * FROM rocpd_info_queue_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_stream AS SELECT * FROM rocpd_info_stream_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_info_code_object AS SELECT * FROM rocpd_info_code_object_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_track AS SELECT * FROM rocpd_track_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_arg AS SELECT * FROM rocpd_arg_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_region AS SELECT * FROM rocpd_region_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_sample AS SELECT * FROM rocpd_sample_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_memory_copy AS SELECT * FROM rocpd_memory_copy_2888d594ff44198a1a931991a71059ab;
CREATE VIEW rocpd_memory_allocate AS SELECT * FROM rocpd_memory_allocate_2888d594ff44198a1a931991a71059ab;
CREATE VIEW kernels AS
SELECT
    K.id AS id,
    K.guid AS guid,
    K.nid AS nid,
    P.pid AS pid,
    T.tid AS tid,
    A.absolute_index AS agent_id,
    A.absolute_index AS agent_abs_index,
    A.logical_index AS agent_log_index,
    A.type_index AS agent_type_index,
    A.type AS agent_type,
    S.kernel_object AS kernel_id,
    K.dispatch_id AS dispatch_id,
    K.replay_pass AS replay_pass,
    E.correlation_id AS correlation_id,
    ST.cuda_stream AS queue_id,
    ST.cuda_stream AS stream_id,
    S.display_name AS name,
    S.display_name AS region,
    S.kernel_name AS mangled_name,
    K."start" AS "start",
    K."end" AS "end",
    K."end" - K."start" AS duration,
    K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
    K.grid_size_x AS grid_size_x,
    K.grid_size_y AS grid_size_y,
    K.grid_size_z AS grid_size_z,
    K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
    K.workgroup_size_x AS workgroup_size_x,
    K.workgroup_size_y AS workgroup_size_y,
    K.workgroup_size_z AS workgroup_size_z,
    K.group_segment_size AS lds_block_size,
    K.private_segment_size AS scratch_size,
    S.arch_vgpr_count AS vgpr_count,
    S.accum_vgpr_count AS accum_vgpr_count,
    S.sgpr_count AS sgpr_count,
    K.event_id AS event_id
FROM rocpd_kernel_dispatch K
LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id
LEFT JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
LEFT JOIN rocpd_event E ON E.id = K.event_id
LEFT JOIN rocpd_info_process P ON P.id = K.pid
LEFT JOIN rocpd_info_thread T ON T.id = K.tid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id;
CREATE VIEW counters_collection AS
SELECT
    MIN(PMC_E.id) AS id,
    PMC_E.guid AS guid,
    K.dispatch_id AS dispatch_id,
    K.replay_pass AS replay_pass,
    S.kernel_object AS kernel_id,
    E.id AS event_id,
    E.correlation_id AS correlation_id,
    P.pid AS pid,
    T.tid AS tid,
    A.absolute_index AS agent_id,
    A.absolute_index AS agent_abs_index,
    A.logical_index AS agent_log_index,
    A.type_index AS agent_type_index,
    A.type AS agent_type,
    ST.cuda_stream AS queue_id,
    ST.cuda_stream AS stream_id,
    K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
    K.grid_size_x AS grid_size_x,
    K.grid_size_y AS grid_size_y,
    K.grid_size_z AS grid_size_z,
    S.display_name AS kernel_name,
    K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
    K.workgroup_size_x AS workgroup_size_x,
    K.workgroup_size_y AS workgroup_size_y,
    K.workgroup_size_z AS workgroup_size_z,
    K.group_segment_size AS lds_block_size,
    K.private_segment_size AS scratch_size,
    S.arch_vgpr_count AS vgpr_count,
    S.accum_vgpr_count AS accum_vgpr_count,
    S.sgpr_count AS sgpr_count,
    PMC_I.name AS counter_name,
    PMC_I.symbol AS counter_symbol,
    PMC_I.component AS component,
    PMC_I.description AS description,
    PMC_I.block AS block,
    PMC_I.expression AS expression,
    PMC_I.value_type AS value_type,
    PMC_I.id AS counter_id,
    SUM(PMC_E.value) AS value,
    K."start" AS "start",
    K."end" AS "end",
    K."end" - K."start" AS duration,
    PMC_I.is_constant AS is_constant,
    PMC_I.is_derived AS is_derived,
    K.nid AS nid
FROM rocpd_pmc_event PMC_E
JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PMC_E.pmc_id
JOIN rocpd_event E ON E.id = PMC_E.event_id
JOIN rocpd_kernel_dispatch K ON K.event_id = E.id
LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id
LEFT JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
LEFT JOIN rocpd_info_process P ON P.id = K.pid
LEFT JOIN rocpd_info_thread T ON T.id = K.tid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id
GROUP BY PMC_E.guid, E.id, PMC_I.name, K.agent_id;
COMMIT;
